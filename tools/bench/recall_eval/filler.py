"""Hand-written background chatter for the recall evaluation log (none of it answers a question in questions.jsonl).

Some lines share words with the facts on purpose (ноутбук, keys, client, budget, deploy …): hard distractors."""

RU = """Привет! Как дела?
Ок, договорились.
Спасибо, гляну вечером.
Я в пробке, буду минут через {n}.
Созвонимся после обеда?
Скинь, пожалуйста, ссылку ещё раз.
Не забудь купить хлеб.
Ахаха, отлично 😂
Всё, я дома.
Завтра с утра буду в офисе.
Посмотри почту, я отправил отчёт.
Кто сегодня дежурит?
Задачу в трекере закрыл.
Ноутбук взял с собой, поработаю из кафе.
Обновил ноутбук до новой версии системы, пока всё нормально.
Купи, пожалуйста, корм для кота.
Погода сегодня отличная, пойду гулять.
На выходных поедем на дачу.
Встреча перенесена на {h}:00.
Посмотрел сериал, который ты советовал, неплохо.
Билеты на поезд подорожали.
Я заказал пиццу, будешь?
Код ревью сделал, пара замечаний.
Надо бы обсудить план на следующий месяц.
Сегодня в спортзал не пойду, устал.
Отправил тебе фотки с праздника.
Интернет дома опять медленный.
Мне нужна твоя подпись на заявлении.
Зайду в банк по дороге.
Позвони, когда освободишься.
Сколько стоит доставка?
Отчёт за квартал почти готов.
Кофемашина на кухне снова не работает.
Забери детей из школы, я задержусь.
Ключи оставил у консьержа.
Сегодня снег, аккуратнее на дороге.
Давай в пятницу в кино?
Я записал видео с демо, посмотри.
В магазине очередь, буду позже.
Новый сотрудник выходит в понедельник.
У меня сел телефон, напишу позже.
Собрание жильцов в среду в 19:00.
Скинь номер карты, переведу за ужин.
Лекарства купил, всё по списку.
Пробки жуткие, еду на метро.
Клиент просил перезвонить после {h}.
Не могу найти зарядку, ты не брал?
Бюджет на следующий год обсудим на планёрке.
Сегодня работаю из дома.
Хорошего вечера!""".splitlines()

EN = """Hey, how's it going?
Ok, sounds good.
Thanks, will check tonight.
Stuck in traffic, be there in {n} minutes.
Can we talk after lunch?
Could you send the link again?
Don't forget to buy bread.
Haha, nice 😂
Home now.
I'll be in the office tomorrow morning.
Check your email, I sent the report.
Who's on call today?
Closed the ticket in the tracker.
Took my laptop along, working from the cafe.
Updated my laptop to the new OS, all fine so far.
Please pick up cat food on the way.
Lovely weather today, going for a walk.
We're going to the countryside this weekend.
The meeting moved to {h}:00.
Watched the show you recommended, not bad.
Train tickets got more expensive.
Ordered pizza, want some?
Did the code review, a couple of comments.
We should go over the plan for next month.
Skipping training today, too tired.
Sent you the photos from the party.
Internet at home is slow again.
I need your signature on the form.
Dropping by the bank on my way.
Call me when you're free.
How much is the delivery?
The quarterly report is almost done.
The coffee machine in the kitchen is broken again.
Pick up the kids from school, I'll be late.
Left the keys with the concierge.
It's snowing, drive carefully.
Movies on Friday?
Recorded a demo video, take a look.
Long queue at the store, I'll be late.
The new hire starts on Monday.
My phone is dying, will text later.
Residents' meeting on Wednesday at 7pm.
Send me your card number, I'll pay you back for dinner.
Got the medicine, everything on the list.
Traffic is terrible, taking the subway.
The client asked to call back after {h}.
Can't find my charger, did you take it?
We'll discuss next year's budget at the planning meeting.
Working from home today.
Have a nice evening!
Deploy is scheduled for next week, right?""".splitlines()

BOT_RU = """Понял, записал.
Готово.
Напомню завтра утром.
Нашёл три подходящих варианта, прислать?
Хорошо, добавил в список дел.
Извините, не понял вопрос.""".splitlines()

BOT_EN = """Got it, noted.
Done.
I'll remind you tomorrow morning.
Found three options, want me to send them?
Sure, added to your to-do list.
Sorry, I didn't get that.""".splitlines()
